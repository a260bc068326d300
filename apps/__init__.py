"""The Streamlit explorer (reads a workspace; never calls a judge)."""
