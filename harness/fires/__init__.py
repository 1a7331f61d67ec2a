"""Fires (seed 000): the threaded tool loop a turn runs, its journal, its tools and its writes."""
