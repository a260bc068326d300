"""Records, the workspace store, importers and the dataset registry."""
