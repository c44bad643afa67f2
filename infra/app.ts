/**
 * `npx cdk synth` / `npx cdk deploy`. For now the stack holds the tables; the functions, the
 * schedule, the event bus and the alarms join it with the CDK issue.
 */
import { App, Stack } from 'aws-cdk-lib';
import { ConclaveTables } from './tables.js';

const app = new App();
const stack = new Stack(app, 'Conclave', { description: 'Conclave: coordinated leader election (KEP-4355) on DynamoDB' });
new ConclaveTables(stack, 'Tables');
app.synth();
