/**
 * The environment variables every Lambda function reads its resources from, set by the CDK
 * construct (infra/deployment.ts) and by local mode; a function reads them in lib/functions/env.ts.
 */
export const ENV = {
  /** Also every metric's `deployment` dimension (lib/functions/observability.ts): unique in an account and Region. */
  leasesTable: 'CONCLAVE_LEASES_TABLE',
  candidatesTable: 'CONCLAVE_CANDIDATES_TABLE',
  identitiesTable: 'CONCLAVE_IDENTITIES_TABLE',
  eventBus: 'CONCLAVE_EVENT_BUS',
  /**
   * The leases table's ARN (this Region's replica's under `regions`): every event is published
   * with it as its one `resources` entry, so rules on a bus that several deployments share (leader
   * discovery's among them) match their own deployment's events alone.
   */
  leasesTableArn: 'CONCLAVE_LEASES_TABLE_ARN',
  timerQueueUrl: 'CONCLAVE_TIMER_QUEUE_URL',
  /** Stream functions only: the SQS queue poison records are sent to, with their content. */
  deadLetterQueueUrl: 'CONCLAVE_DEAD_LETTER_QUEUE_URL',
  /** Optional ElectionConfig overrides as JSON, e.g. {"ackWindowMs":2000}. */
  electionConfig: 'CONCLAVE_ELECTION_CONFIG',
  /**
   * The functions that wake workers (the lease stream's, the candidate stream's, the election
   * timer's), when the deployment has a push path: IoT Core's data endpoint
   * (`https://<id>-ats.iot.<region>.amazonaws.com`) it publishes wakes to.
   */
  pushEndpoint: 'CONCLAVE_PUSH_ENDPOINT',
} as const;
