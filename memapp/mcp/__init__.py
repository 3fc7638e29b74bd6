"""memhub's MCP server (docs/design.md §27): the agent API's recall, search, memory writes,
daily log and proposals as Model Context Protocol tools, served sessionless at `/mcp`."""
