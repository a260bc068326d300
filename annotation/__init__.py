"""Label Studio labeling configs (XML) and annotator guidelines, shipped inside the package."""
