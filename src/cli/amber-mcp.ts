/**
 * `amber:mcp` (experimental): a small JavaScript `McpServer` for tool files, built on the protocol
 * core. Register tools, resources and prompts, then answer messages with `handleMessage`, talk to it
 * in memory through `connectLocal()`, or serve it over stdio with `startStdio()`.
 * Bundled to `dist/cli/amber-mcp.mjs`; tool files import it as `amber:mcp`.
 */
import {
  createMcpHandlers,
  dispatch,
  type Handlers,
  INVALID_PARAMS,
  type JsonRpcResponse,
  RpcError,
  serveStdio,
  type ToolOutcome,
} from "../mcp/index.ts";

type ToolHandler = (args: Record<string, unknown>) => unknown;
type ResourceHandler = (uri: string) => unknown;
type PromptHandler = (args: Record<string, unknown>) => unknown;

interface ToolEntry {
  description: string;
  inputSchema: Record<string, unknown>;
  handler: ToolHandler;
}

interface ResourceEntry {
  name: string;
  description: string;
  mimeType: string;
  handler: ResourceHandler;
}

interface PromptEntry {
  description: string;
  arguments: unknown[];
  handler: PromptHandler;
}

/** A URI-looking resource key (`scheme://…` or an absolute path), as the original told them apart. */
const looksLikeUri = (value: unknown): value is string =>
  typeof value === "string" && (value.includes("://") || value.startsWith("/"));

/** A tool's input schema: a bare property map (no `type`) is the properties of an object schema. */
function objectSchema(shape: unknown): Record<string, unknown> {
  if (!isObject(shape)) return { type: "object" };
  return "type" in shape ? shape : { type: "object", properties: shape };
}

/** An in-memory client of an {@link McpServer}. */
export interface LocalClient {
  request(method: string, params?: Record<string, unknown>): Promise<unknown>;
  /** `initialize` as a 2024-11-05 client (the result: version, capabilities, server info). */
  initialize(clientInfo?: { name: string; version: string }): Promise<unknown>;
  ping(): Promise<unknown>;
  listTools(): Promise<unknown>;
  listResources(): Promise<unknown>;
  readResource(uri: string | { uri: string }): Promise<unknown>;
  listPrompts(): Promise<unknown>;
  getPrompt(
    name: string | { name: string; arguments?: Record<string, unknown> },
    args?: Record<string, unknown>,
  ): Promise<unknown>;
  /** `callTool(name, args)`, or the MCP SDK's `callTool({ name, arguments })`. */
  callTool(
    name: string | { name: string; arguments?: Record<string, unknown> },
    args?: Record<string, unknown>,
  ): Promise<unknown>;
  close(): void;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An MCP server defined in JavaScript. */
export class McpServer {
  readonly info: { name: string; version: string };
  #tools = new Map<string, ToolEntry>();
  #resources = new Map<string, ResourceEntry>();
  #prompts = new Map<string, PromptEntry>();
  #handlers: Handlers<null>;
  #nextId = 1;

  constructor(info: { name: string; version: string }) {
    this.info = { name: String(info?.name ?? "amber-mcp"), version: String(info?.version ?? "0.0.0") };
    const base = createMcpHandlers<null>({
      serverInfo: this.info,
      tools: {
        list: () =>
          [...this.#tools].map(([name, t]) => ({
            name,
            description: t.description,
            inputSchema: t.inputSchema,
          })),
        call: async (name, args): Promise<ToolOutcome> => {
          const tool = this.#tools.get(name);
          if (!tool) throw new RpcError(INVALID_PARAMS, `Unknown tool: ${name}`);
          try {
            const value = await tool.handler(args);
            if (isObject(value) && Array.isArray(value.content)) {
              // An MCP result of the handler's own: its structuredContent (if any) is the structured
              // value, never the result object itself.
              return {
                value: isObject(value.structuredContent) ? value.structuredContent : undefined,
                content: value.content as ToolOutcome["content"],
                isError: value.isError === true,
              };
            }
            return { value };
          } catch (error) {
            return { value: error instanceof Error ? error.message : String(error), isError: true };
          }
        },
      },
    });
    const initialize = base.initialize!;
    this.#handlers = {
      ...base,
      // The original answered an initialize without a version (2024-11-05), as `amber mcp` does.
      initialize: (params, ctx, message, transport) =>
        initialize(
          isObject(params) && "protocolVersion" in params
            ? params
            : { ...(isObject(params) ? params : {}), protocolVersion: "2024-11-05" },
          ctx,
          message,
          transport,
        ),
      "resources/list": () => ({
        resources: [...this.#resources].map(([uri, r]) => ({
          uri,
          name: r.name,
          description: r.description,
          mimeType: r.mimeType,
        })),
      }),
      "resources/read": async (params) => {
        const uri = isObject(params) ? params.uri : undefined;
        const resource = typeof uri === "string" ? this.#resources.get(uri) : undefined;
        if (!resource || typeof uri !== "string")
          throw new RpcError(INVALID_PARAMS, `Unknown resource: ${String(uri)}`);
        const value = await resource.handler(uri);
        const text = typeof value === "string" ? value : JSON.stringify(value);
        return { contents: [{ uri, mimeType: resource.mimeType, text }] };
      },
      "prompts/list": () => ({
        prompts: [...this.#prompts].map(([name, p]) => ({
          name,
          description: p.description,
          arguments: p.arguments,
        })),
      }),
      "prompts/get": async (params) => {
        const name = isObject(params) ? params.name : undefined;
        const prompt = typeof name === "string" ? this.#prompts.get(name) : undefined;
        if (!prompt) throw new RpcError(INVALID_PARAMS, `Unknown prompt: ${String(name)}`);
        const args = isObject(params) && isObject(params.arguments) ? params.arguments : {};
        const value = await prompt.handler(args);
        // A whole `GetPromptResult` of the handler's own (`{messages}`) is sent as it is.
        if (isObject(value) && Array.isArray(value.messages))
          return { description: prompt.description, ...value };
        const messages =
          typeof value === "string" ? [{ role: "user", content: { type: "text", text: value } }] : value;
        return { description: prompt.description, messages };
      },
    };
  }

  /**
   * Registers a tool: `tool(name, description, schema, handler)` as the contract writes it; the
   * shorter `tool(name, description, handler)` and `tool(name, handler)` (the MCP SDK's forms) leave
   * out what they do not name. `schema` is its JSON Schema input (default `{"type":"object"}`).
   */
  tool(
    name: string,
    description:
      | string
      | ToolHandler
      | { description?: string; inputSchema?: unknown; schema?: unknown; handler?: ToolHandler },
    schema?: Record<string, unknown> | ToolHandler,
    handler?: ToolHandler,
  ): this {
    if (isObject(description)) {
      // The original's options form: `tool(name, { description, inputSchema | schema, handler? }, handler?)`.
      const fn = typeof schema === "function" ? schema : description.handler;
      if (typeof fn !== "function") throw new TypeError("McpServer.tool: handler must be a function");
      this.#tools.set(name, {
        description: typeof description.description === "string" ? description.description : "",
        inputSchema: objectSchema(description.inputSchema ?? description.schema),
        handler: fn as ToolHandler,
      });
      return this;
    }
    const parts: unknown[] = [description, schema, handler];
    const last = parts.findLastIndex((part) => part !== undefined);
    const fn = parts[last];
    if (typeof fn !== "function") throw new TypeError("McpServer.tool: handler must be a function");
    const [text, shape] = parts.slice(0, last);
    this.#tools.set(name, {
      description: typeof text === "string" ? text : "",
      inputSchema: objectSchema(shape),
      handler: fn as ToolHandler,
    });
    return this;
  }

  /**
   * Registers a resource answered by `handler(uri)` (a string, or a value sent as JSON). The forms
   * the original took: `resource(uri, [name, [description,]] handler, [mimeType])` and
   * `resource(name, uri, [description,] handler, [mimeType])` — the URI is the argument that looks
   * like one (`scheme://…` or an absolute path).
   */
  resource(...args: unknown[]): this {
    let uri: string;
    let name: string | undefined;
    let rest: unknown[];
    if (!looksLikeUri(args[0]) && looksLikeUri(args[1])) {
      uri = args[1];
      name = typeof args[0] === "string" ? args[0] : undefined;
      rest = args.slice(2);
    } else {
      uri = String(args[0]);
      rest = args.slice(1);
      if (typeof rest[0] === "string" && typeof rest[1] !== "undefined") {
        name = rest[0];
        rest = rest.slice(1);
      }
    }
    const at = rest.findIndex((part) => typeof part === "function");
    if (at === -1) throw new TypeError("McpServer.resource: handler must be a function");
    const description = at > 0 && typeof rest[0] === "string" ? rest[0] : "";
    const mimeType = typeof rest[at + 1] === "string" ? (rest[at + 1] as string) : "text/plain";
    this.#resources.set(uri, {
      name: name ?? uri,
      description,
      mimeType,
      handler: rest[at] as ResourceHandler,
    });
    return this;
  }

  /**
   * Registers a prompt; `handler(args)` returns a string (one user message), a message list or a
   * `{messages}` result. `prompt(name, [description, [arguments,]] handler)`: `arguments` is the
   * list `prompts/list` shows (`[{name, description?, required?}]`).
   */
  prompt(name: string, ...args: unknown[]): this {
    const at = args.findIndex((part) => typeof part === "function");
    if (at === -1) throw new TypeError("McpServer.prompt: handler must be a function");
    const description = typeof args[0] === "string" && at > 0 ? args[0] : "";
    const listed = at > 1 && Array.isArray(args[1]) ? (args[1] as unknown[]) : [];
    this.#prompts.set(name, { description, arguments: listed, handler: args[at] as PromptHandler });
    return this;
  }

  /** Answers one JSON-RPC message (object or JSON text); `null` for notifications. */
  async handleMessage(message: unknown): Promise<JsonRpcResponse | null> {
    let parsed = message;
    if (typeof message === "string") {
      try {
        parsed = JSON.parse(message);
      } catch {
        return { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } };
      }
    }
    return dispatch(parsed, this.#handlers, null, { transport: { session: {} } });
  }

  /** An in-memory client: requests go straight to {@link handleMessage}. */
  connectLocal(): LocalClient {
    let open = true;
    const request = async (method: string, params?: Record<string, unknown>) => {
      if (!open) throw new Error("McpServer local client is closed");
      const response = await this.handleMessage({ jsonrpc: "2.0", id: this.#nextId++, method, params });
      if (response && "error" in response) {
        throw Object.assign(new Error(response.error.message), { code: response.error.code });
      }
      return response?.result;
    };
    return {
      request,
      initialize: (clientInfo = { name: "amber-mcp-local", version: "1.0.0" }) =>
        request("initialize", { protocolVersion: "2024-11-05", capabilities: {}, clientInfo }),
      ping: () => request("ping"),
      listTools: () => request("tools/list"),
      listResources: () => request("resources/list"),
      readResource: (uri) => request("resources/read", isObject(uri) ? { ...uri } : { uri }),
      listPrompts: () => request("prompts/list"),
      getPrompt: (name, args = {}) =>
        isObject(name)
          ? request("prompts/get", { ...name })
          : request("prompts/get", { name, arguments: args }),
      callTool: (name, args = {}) =>
        isObject(name)
          ? request("tools/call", { ...name })
          : request("tools/call", { name, arguments: args }),
      close() {
        open = false;
      },
    };
  }

  /** Serves this server over stdio (either framing) until the input ends. */
  async startStdio(
    input: AsyncIterable<Uint8Array | string> = process.stdin,
    output: { write(data: string): unknown } = process.stdout,
  ): Promise<void> {
    await serveStdio({
      read: input,
      write: (data) => void output.write(data),
      handlers: this.#handlers,
      ctx: null,
    });
  }
}
