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

/**
 * Opens a pool to `url`. bigint columns are returned as JS numbers when safe (ids, revisions
 * stay below 2^53 in practice) and timestamps as Date objects.
 */
export function connect(url: string, opts: { max?: number } = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 20,
    onnotice: () => {},
    types: {
      bigint: { to: 20, from: [20], serialize: (x: unknown) => String(x), parse: (x: string) => Number(x) },
    },
    connection: { application_name: 'switchyard' },
  }) as unknown as Sql;
}
