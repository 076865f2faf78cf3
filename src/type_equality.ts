/**
 * A compile-time check shared by the modules that export plain interfaces beside their zod schemas
 * (the public API must not mention zod types): `Exactly<z.infer<typeof S>, I>` is `true` only when
 * the two types are identical, so a schema and its interface cannot drift apart.
 *
 * Why not `export type X = z.infer<typeof XSchema>` for these: every type checked this way is
 * public (exported from a `mod.ts`), and `deno doc` renders such an alias as the expression
 * `z.infer<typeof XSchema>` — no fields, no field docs — while `deno doc --lint` (part of
 * `deno task check`) refuses it, the alias referencing zod's and the schema's private types. A
 * plain list of words is declared once as a constant instead (`GATE_INTENTS`, `STEP_STATUSES`,
 * `STEP_STATUS_CODES`, `REFLECTION_DECISIONS`, `RUN_STATUS_KINDS`): its type is
 * `typeof LIST[number]` and its schema `z.enum(LIST)`, with nothing to check.
 *
 * @module
 */

/** `true` when `A` and `B` are the same type (not merely assignable both ways), else `false`. */
export type Exactly<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2)
  ? true
  : false;
