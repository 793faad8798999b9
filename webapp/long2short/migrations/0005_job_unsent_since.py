"""Job.unsent_since: a queued row whose task has not reached the broker. The queued rows of now are marked
unsent, so the workers' recovery sends their tasks once (one may be stuck from a broker outage at launch; a
second delivery of the others is harmless: only one claim wins)."""

from django.db import migrations, models
from django.utils import timezone


def mark_queued_rows_unsent(apps, schema_editor):
    for name in ("Long2ShortVariant",):
        apps.get_model("long2short", name).objects.filter(status="queued").update(unsent_since=timezone.now())


class Migration(migrations.Migration):

    dependencies = [
        ('long2short', '0004_started_from'),
    ]

    operations = [
        migrations.AddField(
            model_name='long2shortvariant',
            name='unsent_since',
            field=models.DateTimeField(blank=True, help_text='Queued since then and its task not yet handed to the broker (null once sent); the recovery sends it.', null=True),
        ),
        migrations.RunPython(mark_queued_rows_unsent, migrations.RunPython.noop),
    ]
