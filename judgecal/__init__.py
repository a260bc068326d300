"""judgecal: calibrate LLM judges against blind expert humans."""

__version__ = "0.1.0"
