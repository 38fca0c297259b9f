/**
 * What `GET /` answers on each port, and the hint for SDK paths sent to the management port: a new user who opens the wrong port is told where things are. Pure.
 */

/** `GET /` on the management API: where the API, probes and evaluation are. */
export function controlPlaneIndex(): Record<string, unknown> {
  return {
    service: 'switchyard', component: 'control-plane',
    management_api: '/api/projects/ (Authorization: Bearer <personal API key>)',
    evaluation: 'POST /flags, capture and remote config are served by evaluation nodes (SWITCHYARD_FLAGS_PORT, default 8010), not here',
    probes: ['/_health', '/_ready', '/metrics'],
  };
}

/** `GET /` on an evaluation node: its public routes, and where the management API is. */
export function evaluationNodeIndex(): Record<string, unknown> {
  return {
    service: 'switchyard', component: 'evaluation-node',
    flags: 'POST /flags/?v=2 (project API key in the body)',
    capture: 'POST /i/v0/e/, /e/, /batch/, /capture/',
    remote_config: 'GET /array/<project API key>/config',
    openfeature: 'POST /ofrep/v1/evaluate/flags[/<key>] (OFREP; Authorization: Bearer <project API key>)',
    local_evaluation: 'GET /flags/definitions?token=<project API key> (personal API key)',
    management_api: 'on the control plane (SWITCHYARD_API_PORT, default 8000), not here',
    probes: ['/_health', '/_ready', '/metrics'],
  };
}

/** Paths SDKs send to an evaluation node; on the management port they get {@link wrongPortDetail}. */
export function isEvaluationPath(pathname: string): boolean {
  return /^\/(flags|decide|e|i\/v0\/e|batch|capture|track|engage|s|array|ofrep)(\/|$)/.test(pathname);
}

/** The 404 detail for an evaluation path on the management port. */
export function wrongPortDetail(pathname: string): string {
  return `${pathname} is served by evaluation nodes (SWITCHYARD_FLAGS_PORT, default 8010), not by the management API: point the SDK's host there.`;
}
