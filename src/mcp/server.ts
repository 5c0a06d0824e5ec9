/**
 * MCP method handlers on top of the JSON-RPC dispatcher: lifecycle and version negotiation
 * (2024-11-05 … 2025-11-25 through `initialize`, 2026-07-28 through `server/discover` and per-request
 * `_meta`), `ping`, tools, and — where a server offers them (`lists`) — the empty prompt/resource
 * lists, declared in `capabilities` only then. Tools come from a {@link ToolProvider},
 * so the Worker can generate them per request and the CLI from a tool file.
 */
import type { Handlers, McpSession, TransportInfo } from "./dispatch.ts";
import {
  INVALID_PARAMS,
  isPlainObject,
  METHOD_NOT_FOUND,
  MISSING_CLIENT_CAPABILITY,
  RawJson,
  RpcError,
  UNSUPPORTED_PROTOCOL_VERSION,
} from "./jsonrpc.ts";
import { WeightedLru } from "./lru.ts";

/** Versions negotiated through `initialize`, oldest first. */
export const INITIALIZE_PROTOCOL_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] as const;
/** The stateless revision: no `initialize`, the version travels in every request's `_meta`. */
export const STATELESS_PROTOCOL_VERSION = "2026-07-28";
/** Every version this core speaks, oldest first. */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = [
  ...INITIALIZE_PROTOCOL_VERSIONS,
  STATELESS_PROTOCOL_VERSION,
];
/** The answer to an `initialize` asking for a version we do not speak. */
export const LATEST_INITIALIZE_VERSION = "2025-11-25";
/** Assumed when nothing says otherwise (the Streamable HTTP rule for a missing header). */
export const DEFAULT_PROTOCOL_VERSION = "2025-03-26";

/** `_meta` keys of the 2026-07-28 revision. */
export const META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion";
export const META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities";
export const META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo";
export const META_SERVER_INFO = "io.modelcontextprotocol/serverInfo";

/** True when `version` is one this core speaks. */
export function isSupportedProtocolVersion(version: string): boolean {
  return SUPPORTED_PROTOCOL_VERSIONS.includes(version);
}

/** True when results of `version` may carry `structuredContent` and tools `outputSchema`/`title`. */
export function supportsStructuredContent(version: string): boolean {
  return version >= "2025-06-18";
}

/** The -32022 error of 2026-07-28 for a request naming an unsupported version. */
export function unsupportedVersionError(requested: unknown): RpcError {
  return new RpcError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", {
    supported: [...SUPPORTED_PROTOCOL_VERSIONS],
    requested: String(requested),
  });
}

/**
 * Throws the 2026-07-28 -32021 error when the client did not declare `capability` (e.g. "sampling").
 * A provider calls this before relying on a client feature.
 */
export function requireClientCapability(info: McpRequestInfo, capability: string): void {
  if (info.clientCapabilities?.[capability] !== undefined) return;
  throw new RpcError(MISSING_CLIENT_CAPABILITY, `Missing required client capability: ${capability}`, {
    requiredCapabilities: { [capability]: {} },
  });
}

/** A tool as listed in `tools/list`. */
export interface ToolDefinition {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/** A content item of a tool result (text, or anything else the provider builds itself). */
export type ContentItem = { type: "text"; text: string } | ({ type: string } & Record<string, unknown>);

/**
 * What a tool call produced. `value` is rendered as one text item (strings as-is, else JSON);
 * `isError: true` marks a tool that ran and failed. `content` replaces the rendered text items
 * (images, audio, embedded resources); `structuredContent` is still derived from `value`.
 */
export interface ToolOutcome {
  value: unknown;
  isError?: boolean;
  content?: ContentItem[];
}

/** The MCP `CallToolResult` this core sends. */
export interface CallToolResult {
  content: ContentItem[];
  isError: boolean;
  structuredContent?: Record<string, unknown>;
  [key: string]: unknown;
}

/** Per-request MCP facts handed to the tool provider. */
export interface McpRequestInfo {
  /** The protocol version this request is served under. */
  protocolVersion: string;
  /** True for 2026-07-28 requests (stateless, version in `_meta`). */
  stateless: boolean;
  clientCapabilities?: Record<string, unknown>;
  clientInfo?: Record<string, unknown>;
  /** The request's `params._meta`, if any. */
  meta?: Record<string, unknown>;
}

/**
 * What a provider lists: an array, or a sequence that builds its tools on demand — under
 * `rawToolPages` only the requested page is taken (`slice(start, end)`), so a provider of thousands
 * of tools builds the hundred a page shows.
 */
export interface ToolList {
  readonly length: number;
  slice(start: number, end?: number): ToolDefinition[];
  /**
   * What the definition of the tool at `index` weighs against `toolsPageWeight`, known without
   * building it (the provider's own unit, e.g. the columns its schema carries). Absent: 1 a tool.
   */
  weight?(index: number): number;
}

/**
 * Where tools come from. `list` must be deterministic (same input → same order). `call` throws
 * `new RpcError(INVALID_PARAMS, "Unknown tool: <name>")` for an unknown name and returns
 * `{value, isError: true}` for a tool that failed; any other throw becomes a generic -32603.
 */
export interface ToolProvider<Ctx> {
  list(ctx: Ctx, info: McpRequestInfo): ToolList | Promise<ToolList>;
  call(name: string, args: Record<string, unknown>, ctx: Ctx, info: McpRequestInfo): Promise<ToolOutcome>;
}

/** 2026-07-28 caching hints on list and discover results. */
export interface CacheHint {
  /** `public`: same for every caller; `private`: may differ per authorization context. */
  scope: "public" | "private";
  /** How long a client may reuse the result; 0 = re-fetch every time. */
  ttlMs: number;
}

/** Options of {@link createMcpHandlers}. */
export interface McpServerOptions<Ctx> {
  serverInfo: { name: string; version: string; title?: string };
  instructions?: string;
  tools: ToolProvider<Ctx>;
  /** Caching hints for 2026-07-28 list results (default: private, 0 ms — tool lists are live). */
  cache?: CacheHint;
  /**
   * Which of the (always empty) prompt and resource lists this server offers besides tools: each one
   * listed is declared in `capabilities` and answers its list methods; one left out is neither
   * declared nor answered (-32601). Default both (`amber session`'s contract declares them).
   */
  lists?: ReadonlyArray<"prompts" | "resources">;
  /**
   * Opt-in `tools/list` pagination: at most this many tools per page, the rest behind an opaque
   * `nextCursor` (a cursor that is not one this server issued is -32602). Unset: one page, and any
   * cursor is -32602 (the CLI's behaviour).
   */
  toolsPageSize?: number;
  /**
   * With `toolsPageSize`: a page also ends before the tool that would take its tools' weight
   * ({@link ToolList.weight}) past this, so a page costs what its definitions weigh, not a count of
   * them (a page always holds one tool, so every cursor advances). Unset: pages by count only.
   */
  toolsPageWeight?: number;
  /**
   * Answer `tools/list` with a {@link RawJson} result, serialised once per provider list, protocol
   * version and page: for a provider that returns the same array while its tools are unchanged (the
   * Worker's rev-keyed surface), a served page costs a cache lookup instead of a `JSON.stringify` of
   * up to `toolsPageSize` schemas. Off by default: in-process callers (the CLI's local client) read
   * `result` as an object.
   */
  rawToolPages?: boolean;
}

/**
 * Rendered tool definitions per provider list and protocol version: a provider that returns the
 * same array instance for an unchanged list (the Worker's rev-keyed surface) gets its rendering
 * reused instead of rebuilt per request.
 */
const rendered = new WeakMap<ToolList, Map<string, ToolDefinition[]>>();

function renderedTools(list: ToolList, protocolVersion: string): ToolDefinition[] {
  let byVersion = rendered.get(list);
  if (!byVersion) {
    byVersion = new Map();
    rendered.set(list, byVersion);
  }
  let tools = byVersion.get(protocolVersion);
  if (!tools) {
    tools = list.slice(0).map((tool) => renderToolDefinition(tool, protocolVersion));
    byVersion.set(protocolVersion, tools);
  }
  return tools;
}

/**
 * Characters of serialised `tools/list` pages one handler table keeps (`rawToolPages`). A page of
 * tools with many described columns is large even within a weight budget, and every (list,
 * version, page) is its own text, so an unbounded cache let one app's paging hold most of an
 * isolate's memory; the least recently served pages go first and are rendered again when asked for.
 */
export const RAW_PAGES_BUDGET_CHARS = 8 * 1024 * 1024;

/** A number per provider list (its identity), for keys of a map that may forget them. */
const listSerials = new WeakMap<ToolList, number>();
let lastListSerial = 0;
function listSerial(list: ToolList): number {
  let serial = listSerials.get(list);
  if (serial === undefined) {
    serial = ++lastListSerial;
    listSerials.set(list, serial);
  }
  return serial;
}

const CURSOR_PREFIX = "tools:";

/** The opaque cursor of the page starting at `offset`. */
const encodeCursor = (offset: number): string => btoa(`${CURSOR_PREFIX}${offset}`);

/** Longest cursor this server issues (`tools:` and nine digits, base64): a longer one is not decoded. */
const MAX_CURSOR_CHARS = 20;

/** The offset a cursor names, or null when it is not one this server issued for a list this long. */
function decodeCursor(cursor: unknown, length: number): number | null {
  if (typeof cursor !== "string" || cursor.length > MAX_CURSOR_CHARS) return null;
  let text: string;
  try {
    text = atob(cursor);
  } catch {
    return null;
  }
  if (!text.startsWith(CURSOR_PREFIX)) return null;
  const digits = text.slice(CURSOR_PREFIX.length);
  if (!/^[1-9]\d{0,8}$/.test(digits)) return null;
  const offset = Number(digits);
  return offset < length ? offset : null;
}

/**
 * Where the `tools/list` page starting at `start` ends (exclusive): after at most `maxTools` tools,
 * and before the tool that would take the page's weight past `budget` — but never before `start + 1`,
 * so every page holds a tool and every cursor advances. Depends on nothing but the list and `start`,
 * so a cursor names the same page for as long as the list is unchanged. Pure.
 */
export function toolsPageEnd(
  start: number,
  length: number,
  maxTools: number,
  budget = Number.POSITIVE_INFINITY,
  weightOf: (index: number) => number = () => 1,
): number {
  const last = Math.min(length, start + maxTools);
  if (start >= last) return last;
  let end = start + 1;
  let weight = weightOf(start);
  while (end < last) {
    weight += weightOf(end);
    if (weight > budget) break;
    end++;
  }
  return end;
}

/**
 * Renders a tool outcome as an MCP `CallToolResult` for `protocolVersion`: one text item (strings
 * as-is, other values as JSON, `undefined` as `null`), `isError` always present, and
 * `structuredContent` when the version allows it and the value is a JSON object. Pure.
 */
export function renderToolResult(outcome: ToolOutcome, protocolVersion: string): CallToolResult {
  const { value } = outcome;
  const content: ContentItem[] = outcome.content ?? [
    { type: "text", text: typeof value === "string" ? value : (JSON.stringify(value) ?? "null") },
  ];
  const result: CallToolResult = { content, isError: outcome.isError === true };
  if (isPlainObject(value) && supportsStructuredContent(protocolVersion)) result.structuredContent = value;
  return result;
}

/** Shapes a tool definition for `protocolVersion`, dropping fields that version does not know. */
export function renderToolDefinition(tool: ToolDefinition, protocolVersion: string): ToolDefinition {
  const modern = supportsStructuredContent(protocolVersion);
  const out: ToolDefinition = { name: tool.name, inputSchema: tool.inputSchema };
  if (tool.title !== undefined && modern) out.title = tool.title;
  if (tool.description !== undefined) out.description = tool.description;
  if (tool.outputSchema !== undefined && modern) out.outputSchema = tool.outputSchema;
  if (tool.annotations !== undefined && protocolVersion >= "2025-03-26") out.annotations = tool.annotations;
  return out;
}

/**
 * Works out which version a request is served under: its `_meta` version (2026-07-28 style; an
 * unsupported one is -32022), else the transport's (HTTP header), else the session's (initialize),
 * else {@link DEFAULT_PROTOCOL_VERSION}. A 2026-07-28 request must carry the protocol version and
 * client capabilities in `_meta` (-32602 otherwise).
 */
export function resolveRequestInfo(params: unknown, transport?: TransportInfo): McpRequestInfo {
  const meta = isPlainObject(params) && isPlainObject(params._meta) ? params._meta : undefined;
  const requested = meta?.[META_PROTOCOL_VERSION];
  if (requested === undefined) {
    const session = transport?.session;
    const protocolVersion =
      transport?.protocolVersion ?? session?.protocolVersion ?? DEFAULT_PROTOCOL_VERSION;
    if (protocolVersion === STATELESS_PROTOCOL_VERSION) {
      throw new RpcError(INVALID_PARAMS, `Invalid params: _meta must carry ${META_PROTOCOL_VERSION}`);
    }
    const info: McpRequestInfo = { protocolVersion, stateless: false };
    if (session?.clientCapabilities) info.clientCapabilities = session.clientCapabilities;
    if (session?.clientInfo) info.clientInfo = session.clientInfo;
    if (meta) info.meta = meta;
    return info;
  }
  if (typeof requested !== "string" || !isSupportedProtocolVersion(requested)) {
    throw unsupportedVersionError(requested);
  }
  const stateless = requested === STATELESS_PROTOCOL_VERSION;
  const caps = meta?.[META_CLIENT_CAPABILITIES];
  if (stateless && !isPlainObject(caps)) {
    throw new RpcError(INVALID_PARAMS, `Invalid params: _meta must carry ${META_CLIENT_CAPABILITIES}`);
  }
  const info: McpRequestInfo = { protocolVersion: requested, stateless, meta: meta! };
  const client = meta?.[META_CLIENT_INFO];
  if (isPlainObject(caps)) info.clientCapabilities = caps;
  if (isPlainObject(client)) info.clientInfo = client;
  return info;
}

/**
 * Builds the MCP handler table. The provider sees the per-request {@link McpRequestInfo}
 * (negotiated version, client capabilities) as the argument after `ctx`.
 * 2026-07-28 requests get `resultType`, the server's identity in `_meta`, and caching hints on
 * lists; `initialize` and `ping` do not exist in that revision (-32601).
 */
export function createMcpHandlers<Ctx>(options: McpServerOptions<Ctx>): Handlers<Ctx> {
  const { serverInfo, instructions, tools } = options;
  const pageSize = options.toolsPageSize;
  if (pageSize !== undefined && !(Number.isInteger(pageSize) && pageSize > 0))
    throw new RangeError("toolsPageSize must be a positive integer");
  const pageWeight = options.toolsPageWeight;
  if (pageWeight !== undefined && (pageSize === undefined || !(pageWeight > 0)))
    throw new RangeError("toolsPageWeight must be positive, with a toolsPageSize");
  const cache = options.cache ?? { scope: "private", ttlMs: 0 };
  const resultMeta = { [META_SERVER_INFO]: serverInfo };
  const lists = options.lists ?? ["prompts", "resources"];
  const CAPABILITIES: Record<string, object> = { tools: {} };
  /** `tools/list` results serialised per provider list, version and offset (`rawToolPages`). */
  const servedPages = new WeightedLru<string, RawJson>(RAW_PAGES_BUDGET_CHARS, (page) => page.text.length);
  for (const kind of lists) CAPABILITIES[kind] = {};

  /** Adds the 2026-07-28 result fields (and caching hints for cacheable results). */
  const finish = <T extends object>(result: T, info: McpRequestInfo, cacheable = false): T => {
    if (!info.stateless) return result;
    const extra = cacheable
      ? { resultType: "complete", cacheScope: cache.scope, ttlMs: cache.ttlMs, _meta: resultMeta }
      : { resultType: "complete", _meta: resultMeta };
    return { ...result, ...extra };
  };

  const legacyOnly = (method: string, params: unknown, transport?: TransportInfo): McpRequestInfo => {
    const info = resolveRequestInfo(params, transport);
    if (info.stateless)
      throw new RpcError(
        METHOD_NOT_FOUND,
        `Method not found: ${method} (removed in ${STATELESS_PROTOCOL_VERSION})`,
      );
    return info;
  };

  const promptHandlers: Handlers<Ctx> = {
    "prompts/list"(params, _ctx, _message, transport) {
      return finish({ prompts: [] }, resolveRequestInfo(params, transport), true);
    },
  };
  const resourceHandlers: Handlers<Ctx> = {
    "resources/list"(params, _ctx, _message, transport) {
      return finish({ resources: [] }, resolveRequestInfo(params, transport), true);
    },

    "resources/templates/list"(params, _ctx, _message, transport) {
      return finish({ resourceTemplates: [] }, resolveRequestInfo(params, transport), true);
    },
  };

  return {
    ...(lists.includes("prompts") ? promptHandlers : {}),
    ...(lists.includes("resources") ? resourceHandlers : {}),
    initialize(params, _ctx, _message, transport) {
      const p = isPlainObject(params) ? params : {};
      if (isPlainObject(p._meta) && p._meta[META_PROTOCOL_VERSION] !== undefined) {
        legacyOnly("initialize", params, transport);
      }
      const requested = p.protocolVersion;
      if (typeof requested !== "string")
        throw new RpcError(INVALID_PARAMS, "Invalid params: protocolVersion is required");
      const protocolVersion = (INITIALIZE_PROTOCOL_VERSIONS as readonly string[]).includes(requested)
        ? requested
        : LATEST_INITIALIZE_VERSION;
      const session: McpSession | undefined = transport?.session;
      if (session) {
        session.protocolVersion = protocolVersion;
        if (isPlainObject(p.clientInfo)) session.clientInfo = p.clientInfo;
        if (isPlainObject(p.capabilities)) session.clientCapabilities = p.capabilities;
      }
      const result: Record<string, unknown> = { protocolVersion, capabilities: CAPABILITIES, serverInfo };
      if (instructions !== undefined) result.instructions = instructions;
      return result;
    },

    "server/discover"(params, _ctx, _message, transport) {
      // A legacy client may probe without _meta; a 2026-07-28 one must send it (validated here).
      const hasMeta = isPlainObject(params) && params._meta !== undefined;
      if (hasMeta || transport?.protocolVersion === STATELESS_PROTOCOL_VERSION)
        resolveRequestInfo(params, transport);
      const result: Record<string, unknown> = {
        supportedVersions: [...SUPPORTED_PROTOCOL_VERSIONS],
        capabilities: CAPABILITIES,
        serverInfo,
      };
      if (instructions !== undefined) result.instructions = instructions;
      return {
        ...result,
        resultType: "complete",
        cacheScope: cache.scope,
        ttlMs: cache.ttlMs,
        _meta: resultMeta,
      };
    },

    ping(params, _ctx, _message, transport) {
      legacyOnly("ping", params, transport);
      return {};
    },

    async "tools/list"(params, ctx, _message, transport) {
      const info = resolveRequestInfo(params, transport);
      const cursor = isPlainObject(params) ? params.cursor : undefined;
      if (cursor !== undefined && pageSize === undefined)
        throw new RpcError(INVALID_PARAMS, "Invalid params: unknown cursor");
      const list = await tools.list(ctx, info);
      const offset = cursor === undefined ? 0 : decodeCursor(cursor, list.length);
      if (offset === null) throw new RpcError(INVALID_PARAMS, "Invalid params: unknown cursor");
      /** The page's result; `render` shapes the tools of `start … end` for this version. */
      const build = (render: (start: number, end?: number) => ToolDefinition[]) => {
        if (pageSize === undefined) return finish({ tools: render(0) }, info, true);
        const end = toolsPageEnd(offset, list.length, pageSize, pageWeight, (i) => list.weight?.(i) ?? 1);
        const page: { tools: ToolDefinition[]; nextCursor?: string } = { tools: render(offset, end) };
        if (end < list.length) page.nextCursor = encodeCursor(end);
        return finish(page, info, true);
      };
      if (!options.rawToolPages)
        return build((start, end) => renderedTools(list, info.protocolVersion).slice(start, end));
      // The page depends on nothing but the list, the version (which also decides the 2026-07-28
      // fields, constant per handler table) and the offset.
      const key = `${listSerial(list)} ${info.protocolVersion} ${offset}`;
      let page = servedPages.get(key);
      if (!page) {
        // Served from memory from here on, while it stays within the budget: only this page's tools
        // are taken from the list.
        const render = (start: number, end?: number) =>
          list.slice(start, end).map((tool) => renderToolDefinition(tool, info.protocolVersion));
        page = new RawJson(JSON.stringify(build(render)));
        servedPages.set(key, page);
      }
      return page;
    },

    async "tools/call"(params, ctx, _message, transport) {
      const info = resolveRequestInfo(params, transport);
      if (!isPlainObject(params) || typeof params.name !== "string") {
        throw new RpcError(INVALID_PARAMS, "Invalid params: tools/call needs a string `name`");
      }
      const args = params.arguments ?? {};
      if (!isPlainObject(args))
        throw new RpcError(INVALID_PARAMS, "Invalid params: `arguments` must be an object");
      const outcome = await tools.call(params.name, args, ctx, info);
      return finish(renderToolResult(outcome, info.protocolVersion), info);
    },

    "notifications/initialized"() {},
    "notifications/cancelled"() {},
  };
}
