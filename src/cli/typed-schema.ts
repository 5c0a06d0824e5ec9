/**
 * `--typed` (ours): a JSON Schema per tool from the TypeScript type of its first parameter and its
 * `@param` tags, through the TypeScript compiler API (JSDoc types in .js files work too).
 * TypeScript is heavy, so it is imported only when the flag is given.
 */
import type * as TS from "typescript";
import type { ToolSchema } from "./export-tools.ts";

type Schema = Record<string, unknown>;

const MAX_DEPTH = 8;

/** Returns `tools` with `inputSchema` derived from the source types of `entry`. */
export async function typedToolSchemas(entry: string, tools: ToolSchema[]): Promise<ToolSchema[]> {
  let ts: typeof TS;
  try {
    ts = ((await import("typescript")) as { default: typeof TS }).default;
  } catch {
    throw new Error("--typed needs the `typescript` package installed next to amber");
  }
  const program = ts.createProgram([entry], {
    allowJs: true,
    checkJs: false,
    noEmit: true,
    skipLibCheck: true,
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    types: [],
    lib: ["lib.es5.d.ts"],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  if (!source) return tools;

  const functions = new Map<string, TS.FunctionDeclaration>();
  for (const statement of source.statements) {
    if (ts.isFunctionDeclaration(statement) && statement.name && !functions.has(statement.name.text)) {
      functions.set(statement.name.text, statement);
    }
  }

  const toSchema = (type: TS.Type, depth: number, seen: Set<TS.Type>): Schema => {
    if (depth > MAX_DEPTH || seen.has(type)) return {};
    const flags = type.flags;
    if (flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return {};
    if (flags & ts.TypeFlags.StringLiteral)
      return { type: "string", const: (type as TS.StringLiteralType).value };
    if (flags & ts.TypeFlags.NumberLiteral)
      return { type: "number", const: (type as TS.NumberLiteralType).value };
    if (flags & ts.TypeFlags.BooleanLiteral)
      return { type: "boolean", const: checker.typeToString(type) === "true" };
    if (flags & ts.TypeFlags.StringLike) return { type: "string" };
    if (flags & ts.TypeFlags.NumberLike) return { type: "number" };
    if (flags & ts.TypeFlags.BooleanLike) return { type: "boolean" };
    if (flags & ts.TypeFlags.Null) return { type: "null" };
    if (type.isUnion()) {
      const members = type.types.filter((t) => !(t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Void)));
      const booleans = members.filter((t) => t.flags & ts.TypeFlags.BooleanLiteral);
      const rest = members.filter((t) => !(t.flags & ts.TypeFlags.BooleanLiteral));
      const parts = rest.map((t) => toSchema(t, depth + 1, seen));
      if (booleans.length === 2) parts.push({ type: "boolean" });
      else for (const b of booleans) parts.push(toSchema(b, depth + 1, seen));
      if (parts.length === 1) return parts[0]!;
      if (parts.every((p) => "const" in p && (p.type === "string" || p.type === "number"))) {
        const types = [...new Set(parts.map((p) => p.type))];
        return { type: types.length === 1 ? types[0] : types, enum: parts.map((p) => p.const) };
      }
      return { anyOf: parts };
    }
    if (checker.isArrayType(type)) {
      const [item] = checker.getTypeArguments(type as TS.TypeReference);
      return { type: "array", items: item ? toSchema(item, depth + 1, seen) : {} };
    }
    if (checker.isTupleType(type)) {
      const items = checker
        .getTypeArguments(type as TS.TypeReference)
        .map((t) => toSchema(t, depth + 1, seen));
      return { type: "array", prefixItems: items, minItems: items.length, maxItems: items.length };
    }
    if (type.symbol?.name === "Date") return { type: "string", format: "date-time" };
    if (flags & ts.TypeFlags.Object) {
      seen.add(type);
      const properties: Record<string, Schema> = {};
      const required: string[] = [];
      for (const prop of checker.getPropertiesOfType(type)) {
        const declaration = prop.valueDeclaration ?? prop.declarations?.[0];
        if (!declaration) continue;
        const propType = checker.getTypeOfSymbolAtLocation(prop, declaration);
        if (propType.getCallSignatures().length > 0) continue;
        const schema = toSchema(propType, depth + 1, seen);
        const doc = ts.displayPartsToString(prop.getDocumentationComment(checker)).trim();
        if (doc) schema.description = doc;
        properties[prop.name] = schema;
        if (!(prop.flags & ts.SymbolFlags.Optional)) required.push(prop.name);
      }
      seen.delete(type);
      const schema: Schema = { type: "object", properties };
      if (required.length > 0) schema.required = required;
      const index = checker.getIndexInfoOfType(type, ts.IndexKind.String);
      if (index) schema.additionalProperties = toSchema(index.type, depth + 1, seen);
      return schema;
    }
    return {};
  };

  const paramDocs = (fn: TS.FunctionDeclaration, paramName: string | undefined): Map<string, string> => {
    const docs = new Map<string, string>();
    for (const tag of ts.getJSDocTags(fn)) {
      if (!ts.isJSDocParameterTag(tag)) continue;
      const text = ts
        .getTextOfJSDocComment(tag.comment)
        ?.replace(/^[\s-]+/, "")
        .trim();
      if (!text) continue;
      const name = tag.name.getText();
      const local = paramName && name.startsWith(`${paramName}.`) ? name.slice(paramName.length + 1) : name;
      docs.set(local, text);
    }
    return docs;
  };

  return tools.map((tool) => {
    const fn = functions.get(tool.name);
    const param = fn?.parameters[0];
    // An untyped parameter says nothing about its properties: keep the open default schema.
    if (!fn || !param || (param.type === undefined && ts.getJSDocType(param) === undefined)) return tool;
    const schema = toSchema(checker.getTypeAtLocation(param), 0, new Set());
    if (schema.type !== "object") return tool;
    const properties = schema.properties as Record<string, Schema>;
    const docs = paramDocs(fn, ts.isIdentifier(param.name) ? param.name.text : undefined);
    for (const [name, text] of docs) {
      const property = properties[name];
      if (property && property.description === undefined) property.description = text;
    }
    return { ...tool, inputSchema: schema };
  });
}
