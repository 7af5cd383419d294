"""What the catalog does not describe: the drift proposals asset, and the replay of dead
letters against the current catalog."""
