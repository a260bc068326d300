"""Alignment and bias analyses, one module per question; shared estimators in ``stats``."""
