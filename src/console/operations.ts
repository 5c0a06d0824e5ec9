/**
 * The console's routes as OpenAPI operations (HTML pages and form posts), so `/openapi.json` lists
 * every route the Worker registers. Pure data.
 */
import type { OperationSpec } from "../openapi/operations.ts";

const CSRF = { type: "string", description: "The page's CSRF token." };

export const CONSOLE_OPERATIONS: readonly OperationSpec[] = [
  {
    method: "get",
    path: "/console",
    tag: "console",
    summary: "Console: sign-in page, or your projects",
    access: "none",
    response: { status: 200, schema: "html", description: "HTML page" },
  },
  {
    method: "post",
    path: "/console/login",
    tag: "console",
    summary: "Sign in with a developer token (sets the session cookie)",
    access: "none",
    form: { type: "object", properties: { token: { type: "string" } }, required: ["token"] },
    response: { status: 303, schema: "redirect", description: "To /console" },
  },
  {
    method: "post",
    path: "/console/logout",
    tag: "console",
    summary: "Sign out (clears the cookie)",
    access: "console",
    form: { type: "object", properties: { csrf: CSRF }, required: ["csrf"] },
    response: { status: 303, schema: "redirect", description: "To /console" },
  },
  {
    method: "get",
    path: "/console/projects/{id}",
    tag: "console",
    summary: "A project: collections, exposure, config, connection, tools preview, usage",
    access: "console",
    response: { status: 200, schema: "html", description: "HTML page" },
  },
  {
    method: "post",
    path: "/console/projects/{id}/exposure",
    tag: "console",
    summary: "Set the exposure",
    access: "console",
    form: {
      type: "object",
      properties: {
        csrf: CSRF,
        collections: { type: "array", items: { type: "string" } },
        functions: { type: "array", items: { type: "string" } },
      },
      required: ["csrf"],
    },
    response: { status: 303, schema: "redirect", description: "Back to the project" },
  },
  {
    method: "post",
    path: "/console/projects/{id}/config",
    tag: "console",
    summary: "Change enabled, auth_mode, slug, allowed_origins",
    access: "console",
    form: {
      type: "object",
      properties: {
        csrf: CSRF,
        enabled: { const: "on" },
        auth_mode: { enum: ["all", "client_only", "developer_only"] },
        slug: { type: "string" },
        allowed_origins: {
          type: "string",
          description:
            "Browser origins allowed to call the app MCP and the SDK routes, one per line (replaces the list).",
        },
      },
      required: ["csrf"],
    },
    response: {
      status: 303,
      schema: "redirect",
      description: "Back to the project (400 with the page and a message when invalid)",
    },
  },
  {
    method: "get",
    path: "/console/projects/{id}/grants",
    tag: "console",
    summary: "A project's connected apps (OAuth grants), one page at a time, with revoke forms",
    access: "console",
    query: [
      {
        name: "limit",
        description: "Users (OAuth subjects) per page, 1–100; default 50 (as the REST listing).",
        schema: { type: "integer", minimum: 1, maximum: 100 },
      },
      {
        name: "cursor",
        description: "The previous page's next_cursor (the page's Next page link).",
        schema: { type: "string" },
      },
    ],
    response: { status: 200, schema: "html", description: "HTML page" },
  },
  {
    method: "get",
    path: "/console/projects/{id}/events",
    tag: "console",
    summary: "A project's events, newest first, one page at a time, filtered by name (read-only)",
    access: "console",
    query: [
      {
        name: "limit",
        description: "Events per page, 1–100; default 50 (as the REST listing).",
        schema: { type: "integer", minimum: 1, maximum: 100 },
      },
      {
        name: "cursor",
        description: "The previous page's next_cursor (the page's Next page link).",
        schema: { type: "string" },
      },
      { name: "name", description: "Only events with this name.", schema: { type: "string" } },
    ],
    response: {
      status: 200,
      schema: "html",
      description: "HTML page (400 with the page and the listing's message for a bad name, limit or cursor)",
    },
  },
  {
    method: "post",
    path: "/console/projects/{id}/events/delete",
    tag: "console",
    summary:
      "Delete the project's events received before a date (at most 10,000 a post; the Events page shows the result)",
    access: "console",
    form: {
      type: "object",
      properties: {
        csrf: CSRF,
        before: {
          type: "string",
          description: "A date (YYYY-MM-DD, that day's 00:00 UTC) or an ISO-8601 date-time with a time zone.",
        },
        name: { type: "string", description: "Only events with this name." },
      },
      required: ["csrf", "before"],
    },
    response: {
      status: 200,
      schema: "html",
      description:
        "The Events page with how many were deleted (400 with the page and the message for a bad date or name)",
    },
  },
  {
    method: "post",
    path: "/console/projects/{id}/grants/{grantId}/revoke",
    tag: "console",
    summary: "Revoke a connected app's OAuth grant (404 unless it is this project's)",
    access: "console",
    form: { type: "object", properties: { csrf: CSRF }, required: ["csrf"] },
    response: { status: 303, schema: "redirect", description: "To the connected apps page" },
  },
  {
    method: "get",
    path: "/console/tokens",
    tag: "console",
    summary: "Your developer tokens (never their secrets), with create and revoke forms",
    access: "console",
    response: { status: 200, schema: "html", description: "HTML page" },
  },
  {
    method: "post",
    path: "/console/tokens",
    tag: "console",
    summary: "Create a developer token (the answer page shows its secret once)",
    access: "console",
    form: { type: "object", properties: { csrf: CSRF, name: { type: "string" } }, required: ["csrf"] },
    response: { status: 200, schema: "html", description: "HTML page with the new token" },
  },
  {
    method: "post",
    path: "/console/tokens/{tokenId}/revoke",
    tag: "console",
    summary: "Revoke a developer token (revoking the session's own signs the console out)",
    access: "console",
    form: { type: "object", properties: { csrf: CSRF }, required: ["csrf"] },
    response: { status: 303, schema: "redirect", description: "To the tokens page (or /console)" },
  },
];
