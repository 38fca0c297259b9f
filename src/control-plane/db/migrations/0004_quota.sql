-- Feature-flag request quota per organization (spec §7, §8): a monthly limit set by operators
-- and the usage the evaluation nodes report, summed per calendar month (UTC).
ALTER TABLE organizations ADD COLUMN monthly_flag_requests_limit bigint CHECK (monthly_flag_requests_limit >= 0);
ALTER TABLE organizations ADD COLUMN quota_limited boolean NOT NULL DEFAULT false;

CREATE TABLE flag_request_usage (
  organization_id bigint NOT NULL REFERENCES organizations(id),
  period          text NOT NULL,          -- 'YYYY-MM' (UTC)
  flag_requests   bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (organization_id, period)
);
