/**
 * A compile-time check shared by the modules that export plain interfaces beside their zod schemas
 * (the public API must not mention zod types): `Exactly<z.infer<typeof S>, I>` is `true` only when
 * the two types are identical, so a schema and its interface cannot drift apart.
 *
 * @module
 */

/** `true` when `A` and `B` are the same type (not merely assignable both ways), else `false`. */
export type Exactly<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2)
  ? true
  : false;
