"""The Django project: data model, pages, REST API and admin. Never imports torch."""
