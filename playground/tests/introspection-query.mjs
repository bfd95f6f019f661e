// Prints graphql-js's own introspection query (the one GraphiQL, Apollo tooling, graphql-codegen
// and Postman send), with every option on, for the Rust tests to send over HTTP.
// With `--check <file>`: reads an introspection answer and builds a client schema from it, as
// those tools do, printing what it holds as one JSON line.
import { readFileSync } from 'node:fs';
import { buildClientSchema, getIntrospectionQuery } from 'graphql';

const [, , mode, file] = process.argv;
if (mode === '--check') {
  const answer = JSON.parse(readFileSync(file, 'utf8'));
  const schema = buildClientSchema(answer.data);
  const volume = schema.getType('ProviderVolume');
  console.log(
    JSON.stringify({
      types: Object.keys(schema.getTypeMap()).length,
      query: Object.keys(schema.getQueryType().getFields()),
      providerVolumeFields: volume ? Object.keys(volume.getFields()) : [],
    }),
  );
} else {
  process.stdout.write(
    getIntrospectionQuery({
      descriptions: true,
      specifiedByUrl: true,
      directiveIsRepeatable: true,
      schemaDescription: true,
      inputValueDeprecation: true,
      oneOf: true,
    }),
  );
}
