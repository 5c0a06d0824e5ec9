/** Which client ids the provider resolves by fetching a metadata document (src/oauth/cimd.ts). Pure. */
import { describe, expect, it } from "vitest";
import { fetchesMetadataDocument, isMetadataDocumentUrl } from "../../../src/oauth/cimd.ts";

describe("isMetadataDocumentUrl", () => {
  it("is an https URL with a path as written", () => {
    expect(isMetadataDocumentUrl("https://client.example/oauth/client.json")).toBe(true);
    expect(isMetadataDocumentUrl("https://client.example/")).toBe(true);
    expect(isMetadataDocumentUrl("HTTPS://client.example/c.json")).toBe(true);
    expect(isMetadataDocumentUrl("https://client.example/c.json?v=1")).toBe(true);
  });

  it("is not a registered client id, another scheme, or an https URL without a path", () => {
    expect(isMetadataDocumentUrl("q8Xv2lMZ0pR4s9Tk")).toBe(false);
    expect(isMetadataDocumentUrl("http://client.example/c.json")).toBe(false);
    expect(isMetadataDocumentUrl("https://client.example")).toBe(false);
    expect(isMetadataDocumentUrl("https://client.example?x=/y")).toBe(false);
    expect(isMetadataDocumentUrl("https://client.example#/y")).toBe(false);
    expect(isMetadataDocumentUrl("https://")).toBe(false);
    expect(isMetadataDocumentUrl("")).toBe(false);
  });
});

describe("fetchesMetadataDocument", () => {
  it("fetches nothing where CIMD is off (no global_fetch_strictly_public flag, as in Node)", async () => {
    expect(await fetchesMetadataDocument("https://client.example/c.json")).toBe(false);
  });
});
