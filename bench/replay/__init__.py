"""Typing replays: what a user typing through the language server gets (typing replay, accepting user, soak,
several users on one shared server, a busy machine)."""
