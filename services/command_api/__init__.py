"""The command API: a person's action at a table (the dealer's console, a betting terminal) turned into a
command on Kafka, answered with the events it caused or its rejection and reason code.

* :mod:`services.command_api.actions`: the typed actions, what command each becomes, which role may send it
  (pure: no I/O, no clock);
* :mod:`services.command_api.gateway`: sending an action once per request id and waiting for its answer
  (:class:`~services.command_api.gateway.CommandGateway`), over Kafka or the in-memory bus;
* :mod:`services.command_api.http`: the FastAPI app (bearer token per role, OpenAPI security scheme);
* ``croupier table ...`` (:mod:`croupier.table_cli`): the same actions on the command line, through the same
  gateway.

It is a gateway, not a service: it decides nothing. The services decide every command; this package only
checks what it can before sending (the request's shape and bounds, the role, the table profile) so that bad
input is a 422 naming the field instead of a dead letter.
"""
