"""Bench tests: smoke tests of the benchmark modules (bench.*) and their committed results."""
