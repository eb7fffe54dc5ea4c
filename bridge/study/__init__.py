"""The study: its design (agents, Williams orders, the queue for the arm), the SQLite store of
studies, participants, trials and SUS surveys, and what is reported from them (success rates with
Wilson intervals, the trial log, CSV exports, plots). Nothing here moves a robot."""
