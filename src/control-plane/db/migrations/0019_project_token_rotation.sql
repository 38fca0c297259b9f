-- Project API key rotation (PATCH /api/projects/<id>/reset_token/): the key a reset replaced
-- keeps working until previous_api_token_expires_at (SWITCHYARD_PROJECT_TOKEN_OVERLAP_SECONDS
-- after the reset); both are NULL when no key is in its overlap. Nodes enforce the expiry with
-- their own clock from the replicated project entity.
ALTER TABLE projects
  ADD COLUMN previous_api_token            text NULL UNIQUE,
  ADD COLUMN previous_api_token_expires_at timestamptz NULL,
  ADD CONSTRAINT projects_previous_api_token_pair
    CHECK ((previous_api_token IS NULL) = (previous_api_token_expires_at IS NULL));
