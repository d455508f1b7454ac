"""The operator web UI: server-rendered pages for staff users, with htmx for the live parts."""
