"""Unit tests for the pure parts of the CronJob operator."""
