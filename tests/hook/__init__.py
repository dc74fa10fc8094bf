"""Tests of the ctk-hook program."""
