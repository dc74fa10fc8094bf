"""Tests of ctk system."""
