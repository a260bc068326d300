"""Judge rubrics and prompt templates (YAML), shipped inside the package."""
