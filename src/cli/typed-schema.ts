/**
 * Tool signatures from the source, through the TypeScript compiler API (JSDoc types in .js files
 * work too): a JSON Schema per tool from its parameter types, `@param` tags and default values, and
 * how `arguments` reach it — as the one object (the contract's form) or spread by parameter name
 * (positional parameters). TypeScript is heavy: it is imported only on a cache miss, and results are
 * cached by content hash under the user's cache directory (`$XDG_CACHE_HOME/amber`, `~/.cache/amber`).
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import type * as TS from "typescript";
import { amberCacheDir } from "./compile.ts";
import type { ToolSchema } from "./export-tools.ts";
import { isWithin } from "./permissions.ts";

type Schema = Record<string, unknown>;

const MAX_DEPTH = 8;

/**
 * A map from names the tool file chose (exports, parameters, properties) without a prototype: on a
 * `{}`, `__proto__` set the prototype (the name vanished from the schema, an export's positional
 * parameters went unmapped) and `constructor` read Object's.
 */
const record = <T>(): Record<string, T> => Object.create(null) as Record<string, T>;

/** Thrown inside a result schema's derivation: the type's JSON form is not its properties. */
class NotJsonShaped extends Error {}

/** How one tool takes its arguments. */
export interface ToolSignature {
  /** The derived input schema (absent: nothing known, keep the open default). */
  inputSchema?: Schema;
  /**
   * Parameter names in order when the function takes positional parameters (`null`: a parameter
   * that cannot be named, passed `undefined`); absent for the single-object form.
   */
  params?: (string | null)[];
  /**
   * The result schema, when the (awaited) return type is an object type whose JSON form the schema
   * states exactly (no class instances, library objects or `toJSON`); absent otherwise.
   */
  outputSchema?: Schema;
}

/** What {@link analyzeToolFile} found. */
export interface ToolFileAnalysis {
  signatures: Record<string, ToolSignature>;
  /** Load-time warnings (parameters that cannot be mapped). */
  warnings: string[];
}

interface CacheEntry {
  deps: Record<string, string>;
  analysis: ToolFileAnalysis;
}

/** Bumped when the analysis changes shape, so entries of an older CLI build are not reused. */
const ANALYSIS_FORMAT = 4;

const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

/**
 * Whether the analysis may read a file (the policy's read grants: the types of a file the tool may
 * not read would show its literals in the listed schemas). Absent: every file.
 */
export type CanRead = (path: string) => boolean;

/** A cached analysis, if every file it came from is unchanged and readable now. */
function readCached(file: string, base: string, canRead: CanRead): ToolFileAnalysis | undefined {
  let cached: CacheEntry;
  try {
    cached = JSON.parse(readFileSync(file, "utf8")) as CacheEntry;
    for (const [path, hash] of Object.entries(cached.deps)) {
      const source = resolve(base, path);
      if (!canRead(source) || sha256(readFileSync(source)) !== hash) return undefined;
    }
  } catch {
    return undefined;
  }
  return cached.analysis;
}

function writeCached(file: string, entry: CacheEntry): void {
  try {
    mkdirSync(join(file, ".."), { recursive: true });
    const temp = `${file}.${process.pid}.tmp`;
    writeFileSync(temp, JSON.stringify(entry));
    renameSync(temp, file);
  } catch {
    // The cache is an optimisation: an unwritable cache directory means analysing every start.
  }
}

/**
 * Analyses the exported functions `names` of `entry`, from the cache when the entry and every
 * local file its types came from are unchanged. `cacheKey` (the CLI version) separates releases.
 */
export async function analyzeToolFile(
  entry: string,
  names: string[],
  cacheKey = "",
  canRead: CanRead = () => true,
): Promise<ToolFileAnalysis> {
  let content: Buffer;
  try {
    content = readFileSync(entry);
  } catch {
    return { signatures: record(), warnings: [] };
  }
  // Keyed by content, not path (a copied or moved file hits too); local dependencies are recorded
  // relative to the entry's directory and checked by hash.
  const key = sha256(`${ANALYSIS_FORMAT}\0${cacheKey}\0${names.join(",")}\0${sha256(content)}`);
  const file = join(amberCacheDir(), `schemas-${key.slice(0, 40)}.json`);
  const base = dirname(entry);
  const cached = readCached(file, base, canRead);
  if (cached) return cached;
  const { analysis, sources, refused } = await analyze(entry, names, canRead);
  const deps: Record<string, string> = {};
  for (const path of sources) {
    try {
      deps[relative(base, path)] = sha256(readFileSync(path));
    } catch {}
  }
  // An analysis missing a refused file is this policy's, not the file's: not cached for others.
  if (!refused) writeCached(file, { deps, analysis });
  return analysis;
}

/** Returns `tools` with `inputSchema` derived from the source types of `entry` (where known). */
export async function typedToolSchemas(
  entry: string,
  tools: ToolSchema[],
  canRead?: CanRead,
): Promise<ToolSchema[]> {
  const { signatures } = await analyzeToolFile(
    entry,
    tools.map((t) => t.name),
    "",
    canRead,
  );
  return tools.map((tool) => {
    const schema = signatures[tool.name]?.inputSchema;
    return schema ? { ...tool, inputSchema: schema } : tool;
  });
}

async function analyze(
  entry: string,
  names: string[],
  canRead: CanRead,
): Promise<{ analysis: ToolFileAnalysis; sources: string[]; refused: boolean }> {
  let ts: typeof TS;
  try {
    ts = ((await import("typescript")) as { default: typeof TS }).default;
  } catch {
    throw new Error("typed schemas need the `typescript` package installed next to amber");
  }
  const options: TS.CompilerOptions = {
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
  };
  // A file the policy does not let the tool read does not exist for the compiler.
  const host = ts.createCompilerHost(options);
  let refused = false;
  // The compiler's own package (next to the CLI, wherever that is installed) and the package.json
  // files it looks up above it are not the tool's.
  const library = host.getDefaultLibLocation?.();
  const compilerFile = (path: string) =>
    library !== undefined &&
    (isWithin(path, dirname(library)) ||
      (basename(path) === "package.json" && isWithin(library, dirname(path))));
  const readable = (path: string) => {
    if (compilerFile(resolve(path)) || canRead(path)) return true;
    refused = true;
    return false;
  };
  const { readFile, fileExists } = host;
  host.readFile = (path) => (readable(path) ? readFile.call(host, path) : undefined);
  host.fileExists = (path) => fileExists.call(host, path) && readable(path);
  const program = ts.createProgram([entry], options, host);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  const sources = program
    .getSourceFiles()
    .filter((f) => !program.isSourceFileDefaultLibrary(f))
    .map((f) => f.fileName);
  const analysis: ToolFileAnalysis = { signatures: record(), warnings: [] };
  if (!source) return { analysis, sources, refused };

  const functions = new Map<string, TS.FunctionDeclaration>();
  for (const statement of source.statements) {
    if (ts.isFunctionDeclaration(statement) && statement.name && !functions.has(statement.name.text)) {
      functions.set(statement.name.text, statement);
    }
  }

  /**
   * The JSON Schema of `type`. `output`: for a result, whose JSON form the schema must state
   * exactly — a class instance, a library object (`Error`, `Map`), a function or a `toJSON` type
   * throws {@link NotJsonShaped}, a property that admits `undefined` is not required (JSON drops
   * it), and an empty object type (`{}` also admits primitives) accepts anything.
   */
  const toSchema = (type: TS.Type, depth: number, seen: Set<TS.Type>, output = false): Schema => {
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
      const parts = rest.map((t) => toSchema(t, depth + 1, seen, output));
      if (booleans.length === 2) parts.push({ type: "boolean" });
      else for (const b of booleans) parts.push(toSchema(b, depth + 1, seen, output));
      if (parts.length === 1) return parts[0]!;
      if (parts.every((p) => "const" in p && (p.type === "string" || p.type === "number"))) {
        const types = [...new Set(parts.map((p) => p.type))];
        return { type: types.length === 1 ? types[0] : types, enum: parts.map((p) => p.const) };
      }
      return { anyOf: parts };
    }
    if (checker.isArrayType(type)) {
      const [item] = checker.getTypeArguments(type as TS.TypeReference);
      return { type: "array", items: item ? toSchema(item, depth + 1, seen, output) : {} };
    }
    if (checker.isTupleType(type)) {
      const items = checker
        .getTypeArguments(type as TS.TypeReference)
        .map((t) => toSchema(t, depth + 1, seen, output));
      return { type: "array", prefixItems: items, minItems: items.length, maxItems: items.length };
    }
    if (type.symbol?.name === "Date") return { type: "string", format: "date-time" };
    if (flags & ts.TypeFlags.Object) {
      if (output && !jsonShaped(type)) throw new NotJsonShaped();
      seen.add(type);
      const properties = record<Schema>();
      const required: string[] = [];
      for (const prop of checker.getPropertiesOfType(type)) {
        const declaration = prop.valueDeclaration ?? prop.declarations?.[0];
        if (!declaration) continue;
        const propType = checker.getTypeOfSymbolAtLocation(prop, declaration);
        if (propType.getCallSignatures().length > 0) continue;
        const schema = toSchema(propType, depth + 1, seen, output);
        const doc = ts.displayPartsToString(prop.getDocumentationComment(checker)).trim();
        if (doc) schema.description = doc;
        properties[prop.name] = schema;
        const optional = prop.flags & ts.SymbolFlags.Optional || (output && admitsUndefined(propType));
        if (!optional) required.push(prop.name);
      }
      seen.delete(type);
      const index = checker.getIndexInfoOfType(type, ts.IndexKind.String);
      if (output && required.length === 0 && Object.keys(properties).length === 0 && !index) return {};
      const schema: Schema = { type: "object", properties };
      if (required.length > 0) schema.required = required;
      if (index) schema.additionalProperties = toSchema(index.type, depth + 1, seen, output);
      return schema;
    }
    return {};
  };

  const admitsUndefined = (type: TS.Type): boolean =>
    (type.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Void)) !== 0 ||
    (type.isUnion() && type.types.some(admitsUndefined));

  /** Whether `JSON.stringify` writes a value of object type `type` as its own properties. */
  const jsonShaped = (type: TS.Type): boolean => {
    if (type.getCallSignatures().length > 0 || type.getConstructSignatures().length > 0) return false;
    if (checker.getPropertyOfType(type, "toJSON")) return false;
    const symbol = type.symbol;
    if (!symbol) return true;
    if (symbol.flags & ts.SymbolFlags.Class) return false;
    // Library interfaces are objects with behaviour (`Error`, `RegExp`, `Promise`); library mapped
    // types (`Record`, `Partial`, `Pick`) are plain shapes.
    if (!(symbol.flags & ts.SymbolFlags.Interface)) return true;
    return !(symbol.declarations ?? []).some((d) => program.isSourceFileDefaultLibrary(d.getSourceFile()));
  };

  /** The result schema of `fn`: its awaited return type, when that is a JSON-shaped object type. */
  const outputSchemaOf = (fn: TS.FunctionDeclaration): Schema | undefined => {
    const signature = checker.getSignatureFromDeclaration(fn);
    if (!signature) return undefined;
    const returned = checker.getReturnTypeOfSignature(signature);
    const type = checker.getAwaitedType(returned) ?? returned;
    if (type.isUnion() || !(type.flags & ts.TypeFlags.Object)) return undefined;
    try {
      const schema = toSchema(type, 0, new Set(), true);
      return schema.type === "object" ? schema : undefined;
    } catch (error) {
      if (error instanceof NotJsonShaped) return undefined;
      throw error;
    }
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

  /** A JSON value written as a literal (the default of a parameter), else undefined. */
  const literal = (node: TS.Expression | undefined): unknown => {
    if (!node) return undefined;
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
    if (ts.isNumericLiteral(node)) return Number(node.text);
    if (ts.isPrefixUnaryExpression(node) && node.operator === ts.SyntaxKind.MinusToken) {
      const n = literal(node.operand);
      return typeof n === "number" ? -n : undefined;
    }
    if (node.kind === ts.SyntaxKind.TrueKeyword) return true;
    if (node.kind === ts.SyntaxKind.FalseKeyword) return false;
    if (node.kind === ts.SyntaxKind.NullKeyword) return null;
    if (ts.isArrayLiteralExpression(node)) {
      const items = node.elements.map((e) => literal(e));
      return items.every((i) => i !== undefined) ? items : undefined;
    }
    return undefined;
  };

  /** Whether a value of `schema` may be an object (`any`/`unknown` may; `number | null` may not). */
  const admitsObject = (schema: Schema): boolean => {
    if (Array.isArray(schema.anyOf)) return (schema.anyOf as Schema[]).some(admitsObject);
    if (schema.enum !== undefined || schema.const !== undefined) return false;
    const type = schema.type;
    return type === undefined || type === "object" || (Array.isArray(type) && type.includes("object"));
  };

  const hasType = (param: TS.ParameterDeclaration) =>
    param.type !== undefined || ts.getJSDocType(param) !== undefined;

  /**
   * The single-object form (the contract's: the tool gets `arguments` itself): one parameter that
   * is a destructuring object, untyped, or of a type that admits an object — `any`, `unknown`,
   * `object`, a union of object types. Only a type that excludes objects (`number`, `string[]`,
   * …) makes a lone parameter positional.
   */
  const takesOneObject = (fn: TS.FunctionDeclaration): boolean => {
    if (fn.parameters.length === 0) return true;
    if (fn.parameters.length > 1) return false;
    const param = fn.parameters[0]!;
    if (param.dotDotDotToken) return false;
    if (ts.isObjectBindingPattern(param.name)) return true;
    if (ts.isArrayBindingPattern(param.name)) return false;
    if (!hasType(param)) return true;
    return admitsObject(toSchema(checker.getTypeAtLocation(param), 0, new Set()));
  };

  for (const name of names) {
    const fn = functions.get(name);
    if (!fn) continue;
    const outputSchema = outputSchemaOf(fn);
    if (takesOneObject(fn)) {
      const param = fn.parameters[0];
      const schema = param && hasType(param) ? toSchema(checker.getTypeAtLocation(param), 0, new Set()) : {};
      if (!param || schema.type !== "object") {
        if (outputSchema) analysis.signatures[name] = { outputSchema };
        continue;
      }
      const properties = schema.properties as Record<string, Schema>;
      const docs = paramDocs(fn, ts.isIdentifier(param.name) ? param.name.text : undefined);
      for (const [prop, text] of docs) {
        const property = properties[prop];
        if (property && property.description === undefined) property.description = text;
      }
      if (ts.isObjectBindingPattern(param.name)) {
        for (const element of param.name.elements) {
          const prop = (element.propertyName ?? element.name).getText();
          const value = literal(element.initializer);
          if (value !== undefined && properties[prop]) properties[prop].default = value;
        }
      }
      analysis.signatures[name] = outputSchema
        ? { inputSchema: schema, outputSchema }
        : { inputSchema: schema };
      continue;
    }
    const docs = paramDocs(fn, undefined);
    const params: (string | null)[] = [];
    const properties = record<Schema>();
    const required: string[] = [];
    fn.parameters.forEach((param, index) => {
      if (param.dotDotDotToken || !ts.isIdentifier(param.name)) {
        const what = param.dotDotDotToken ? "a rest parameter" : "a destructuring pattern";
        analysis.warnings.push(
          `tool \`${name}\`: parameter ${index + 1} is ${what} and cannot be named in arguments; it receives undefined (name it, or take one object parameter)`,
        );
        params.push(null);
        return;
      }
      const pname = param.name.text;
      params.push(pname);
      // A default value types an unannotated parameter (`punct = "!"` is a string).
      const typed = hasType(param) || param.initializer !== undefined;
      const schema = typed ? toSchema(checker.getTypeAtLocation(param), 0, new Set()) : {};
      const doc = docs.get(pname);
      if (doc) schema.description = doc;
      const value = literal(param.initializer);
      if (value !== undefined) schema.default = value;
      properties[pname] = schema;
      if (!param.questionToken && !param.initializer) required.push(pname);
    });
    const inputSchema: Schema = { type: "object", properties };
    if (required.length > 0) inputSchema.required = required;
    analysis.signatures[name] = outputSchema
      ? { inputSchema, params, outputSchema }
      : { inputSchema, params };
  }
  return { analysis, sources, refused };
}
