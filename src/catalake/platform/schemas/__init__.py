"""Data schemas of message definitions -> Spark types."""
