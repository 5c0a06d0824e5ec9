/** placeholder */
export class McpServer {}
