"""``python -m judgecal.audit.schema``: regenerate ``judgecal/audit/audit.schema.json`` from the types."""

from judgecal.audit.schema.io import write_schema

print(write_schema())
