"""The projection service: live odds, roadmaps, cage ledgers and surveillance alerts."""
