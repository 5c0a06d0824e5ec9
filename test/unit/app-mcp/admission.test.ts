import { describe, expect, it } from "vitest";
import { appMcpRefusal } from "../../../src/app-mcp/admission.ts";

describe("appMcpRefusal", () => {
  it("admits both scopes on an enabled endpoint with auth mode all", () => {
    const config = { enabled: true, authMode: "all" } as const;
    expect([appMcpRefusal(config, "developer"), appMcpRefusal(config, "end_user")]).toEqual([null, null]);
  });

  it("refuses developers under client_only and end users under developer_only, and no one else", () => {
    const clientOnly = { enabled: true, authMode: "client_only" } as const;
    const developerOnly = { enabled: true, authMode: "developer_only" } as const;
    expect([
      appMcpRefusal(clientOnly, "developer"),
      appMcpRefusal(clientOnly, "end_user"),
      appMcpRefusal(developerOnly, "developer"),
      appMcpRefusal(developerOnly, "end_user"),
    ]).toEqual(["client_only", null, null, "developer_only"]);
  });

  it("refuses every scope of a disabled endpoint, whatever its auth mode", () => {
    for (const authMode of ["all", "client_only", "developer_only"] as const)
      expect([
        appMcpRefusal({ enabled: false, authMode }, "developer"),
        appMcpRefusal({ enabled: false, authMode }, "end_user"),
      ]).toEqual(["disabled", "disabled"]);
  });
});
