"""The landing zone: where a day's files are (layouts), listing them, cutting them into pieces
packed into tasks, and reading a piece record by record in every landed format."""
