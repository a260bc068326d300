"""Human label aggregation (Dawid-Skene & co.), scikit-learn style."""
