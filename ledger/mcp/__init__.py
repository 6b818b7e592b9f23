"""The Model Context Protocol server (``manage.py mcp``): the API's tools, for MCP clients.

Every tool call is an API request made in this process through the whole Django stack
(key, scope, rate limits, write gate, recall record), so no door skips a rule."""
