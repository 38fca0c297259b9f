/**
 * Postgres connections through the `postgres` package. One pool per process (`Sql`); `sql.begin`
 * gives a transaction handle (`Tx`), which TypeScript does not accept where an `Sql` is asked for:
 * a function that runs statements inside or outside a transaction takes a {@link Handle}.
 */
import postgres from 'postgres';

/** A connection pool or transaction handle. */
export type Sql = postgres.Sql<Record<string, never>>;
/** A transaction handle (inside `sql.begin`). */
export type Tx = postgres.TransactionSql<Record<string, never>>;
/** Either: what a function takes that runs statements inside or outside a transaction. */
export type Handle = Sql | Tx;

/** `application_name` of the control plane's connections (pg_stat_activity shows it). */
export const APPLICATION_NAME = 'switchyard';

/**
 * Opens a pool to `url` of at most `max` connections (default 20), named `applicationName` in
 * pg_stat_activity (default {@link APPLICATION_NAME}). bigint columns are returned as JS numbers
 * when safe (ids, revisions stay below 2^53 in practice) and timestamps as Date objects.
 */
export function connect(url: string, opts: { max?: number; applicationName?: string } = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 20,
    onnotice: () => {},
    types: {
      bigint: { to: 20, from: [20], serialize: (x: unknown) => String(x), parse: (x: string) => Number(x) },
    },
    connection: { application_name: opts.applicationName ?? APPLICATION_NAME },
  }) as unknown as Sql;
}
