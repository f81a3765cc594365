/** Path of the MCP Streamable HTTP endpoint on the relay. */
export const MCP_PATH = '/mcp';
/** Header (or `?agent=` query) naming the agent: a reconnecting agent with the same name gets its terminals back. */
export const AGENT_HEADER = 'x-ptyrelay-agent';
