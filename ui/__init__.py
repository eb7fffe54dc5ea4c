"""The web side: FastAPI app, participant, operator, results, arena and study pages."""
