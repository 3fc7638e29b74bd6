"""The agent API (`/api/v1/`): file sync, remember/forget, recall and prompt assembly."""
