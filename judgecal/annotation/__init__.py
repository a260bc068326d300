"""Blind expert review in Label Studio: the server, pushing tasks, annotators, pulling labels."""
