"""audit.json, the self-contained audit.html, the printable PDF, the terminal summary and the annotators' page."""
