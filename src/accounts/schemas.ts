/**
 * Input schemas of the accounts services (developer sign-up, projects, client keys). Pure: the REST
 * routes parse bodies with them, the platform MCP catalogue shows them as JSON Schema.
 */
import * as v from "valibot";

/** An email address, trimmed and lowercased (emails are unique case-insensitively). */
export const EmailSchema = v.pipe(
  v.string(),
  v.trim(),
  v.toLowerCase(),
  v.maxLength(254, "must be at most 254 characters"),
  v.email("must be a valid email address"),
);

/** A project name: 1–100 characters after trimming. */
export const ProjectNameSchema = v.pipe(
  v.string(),
  v.trim(),
  v.minLength(1, "must not be empty"),
  v.maxLength(100, "must be at most 100 characters"),
);

export const DeveloperSignupSchema = v.strictObject({
  email: EmailSchema,
  project_name: v.optional(ProjectNameSchema),
});
export type DeveloperSignup = v.InferOutput<typeof DeveloperSignupSchema>;

export const CreateProjectSchema = v.strictObject({ name: ProjectNameSchema });
export type CreateProject = v.InferOutput<typeof CreateProjectSchema>;

export const UpdateProjectSchema = v.strictObject({ name: ProjectNameSchema });
export type UpdateProject = v.InferOutput<typeof UpdateProjectSchema>;

export const CreateClientKeySchema = v.strictObject({
  name: v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.minLength(1, "must not be empty"),
      v.maxLength(100, "must be at most 100 characters"),
    ),
  ),
});
export type CreateClientKey = v.InferOutput<typeof CreateClientKeySchema>;

/** A new developer token: an optional label, as for client keys. */
export const CreateDeveloperTokenSchema = CreateClientKeySchema;

/** Password rules: 8–1024 characters (the upper bound caps PBKDF2 input work). */
export const PasswordSchema = v.pipe(
  v.string(),
  v.minLength(8, "must be at least 8 characters"),
  v.maxLength(1024, "must be at most 1024 characters"),
);

export const EndUserCredentialsSchema = v.strictObject({ email: EmailSchema, password: PasswordSchema });
export type EndUserCredentials = v.InferOutput<typeof EndUserCredentialsSchema>;

/** Sign-in takes any non-empty password: rules apply at sign-up, a mismatch is just a 401. */
export const SigninSchema = v.strictObject({
  email: EmailSchema,
  password: v.pipe(
    v.string(),
    v.minLength(1, "must not be empty"),
    v.maxLength(1024, "must be at most 1024 characters"),
  ),
});
export type Signin = v.InferOutput<typeof SigninSchema>;
