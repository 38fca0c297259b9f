/**
 * PostHog's embedded user ("UserBasic", spec §2.1) used in `created_by` / `last_modified_by`.
 */

/** The users columns needed to build a {@link UserBasic}. */
export interface UserRow {
  id: number; uuid: string; distinct_id: string; first_name: string; last_name: string; email: string;
  is_email_verified: boolean; hedgehog_config: Record<string, unknown> | null; role_at_organization: string | null;
}

/** Spec §2.1 embedded user. */
export interface UserBasic {
  id: number; uuid: string; distinct_id: string; first_name: string; last_name: string; email: string;
  is_email_verified: boolean; hedgehog_config: Record<string, unknown> | null; role_at_organization: string | null;
}

/** users row → spec §2.1 embedded user (null stays null). */
export function userBasic(row: UserRow | null | undefined): UserBasic | null {
  if (!row) return null;
  return {
    id: row.id, uuid: row.uuid, distinct_id: row.distinct_id, first_name: row.first_name, last_name: row.last_name,
    email: row.email, is_email_verified: row.is_email_verified, hedgehog_config: row.hedgehog_config,
    role_at_organization: row.role_at_organization,
  };
}
