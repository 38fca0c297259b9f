/**
 * The one error the property module throws.
 *
 * Thrown only by `compilePropertyFilter`, never by `test()`. By default it is thrown exactly where
 * Rust's `/flags` service fails to *deserialise* the filter (unknown or non-string operator,
 * non-string key); problems Rust only meets at match time (malformed `between` bounds, an
 * unparseable semver or date filter, `in`/`not_in`/`flag_evaluates_to` on a plain property)
 * compile to a filter that answers like Rust (`false`) and throw only with `strict: true`, which
 * the control plane's validator uses to reject them on write. Source: Rust
 * `properties/property_models.rs` (serde `OperatorType`) and `property_matching.rs`.
 */
export class PropertyFilterError extends Error {
  /** The offending field of the filter: `operator`, `key`, `value`, `timezone`, … */
  readonly field: string;

  constructor(field: string, message: string) {
    super(message);
    this.name = 'PropertyFilterError';
    this.field = field;
  }
}
