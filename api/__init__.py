"""The REST API (/api/v1/) and /healthz/: the face Dovecote shows to programs.

`api/<app>/` holds the views, serializers and routes of one domain app; the rules they apply and
the workflows they start live in the domain apps below (docs/architecture.md#layers).
"""
