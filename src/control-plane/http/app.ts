/**
 * Every route of the management API, in one list: each resource folder contributes its own
 * `xxxRoutes(deps)`. Adding a resource is one line here.
 */
import type { Deps, Route } from './types.js';
import { projectRoutes } from '../projects/routes.js';
import { featureFlagRoutes } from '../feature-flags/routes.js';
import { localEvaluationRoutes } from '../feature-flags/local-evaluation-routes.js';
import { featureFlagStatusRoutes } from '../feature-flags/status-routes.js';
import { featureFlagRemoteConfigRoutes } from '../feature-flags/remote-config-routes.js';
import { featureFlagHelperRoutes } from '../feature-flags/helper-routes.js';
import { eventDefinitionRoutes } from '../event-definitions/routes.js';
import { personalApiKeyRoutes } from '../keys/routes.js';
import { cohortRoutes } from '../cohorts/routes.js';
import { experimentRoutes } from '../experiments/routes.js';
import { queryRoutes } from '../query/routes.js';
import { dashboardRoutes } from '../dashboards/routes.js';
import type { QueryGate } from '../query/gate.js';
import { usageDashboardRoutes } from '../feature-flags/usage-dashboard-routes.js';
import { eventRoutes } from '../events-api/routes.js';
import { personRoutes } from '../persons/routes.js';
import { organizationRoutes } from '../projects/organizations.js';
import { userRoutes } from '../users/routes.js';
import { scheduledChangeRoutes } from '../scheduled-changes/routes.js';

/** All management routes; queries (`/query/`, insights' results) run through `queries`. */
export function allRoutes(deps: Deps, queries: QueryGate): Route[] {
  return [
    ...projectRoutes(deps),
    ...organizationRoutes(deps),
    ...userRoutes(deps),
    ...scheduledChangeRoutes(deps),
    ...personalApiKeyRoutes(deps),
    ...featureFlagRoutes(deps),
    ...localEvaluationRoutes(deps),
    ...featureFlagStatusRoutes(deps),
    ...featureFlagRemoteConfigRoutes(deps),
    ...featureFlagHelperRoutes(deps),
    ...usageDashboardRoutes(deps),
    ...eventDefinitionRoutes(deps),
    ...cohortRoutes(deps),
    ...experimentRoutes(deps),
    ...queryRoutes(deps, queries),
    ...dashboardRoutes(deps, queries),
    ...eventRoutes(deps),
    ...personRoutes(deps),
  ];
}
