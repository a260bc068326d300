"""audit.json and a self-contained audit.html."""
