"""Template context: the projects a user may switch between and the current one."""

from webapp.projects.models import Project

SESSION_KEY = "current_project_id"


def current_project_for(request) -> Project | None:
    """The session's chosen project if still visible, else the first visible one."""
    if not request.user.is_authenticated:
        return None
    visible = Project.objects.visible_to(request.user)
    chosen = request.session.get(SESSION_KEY)
    project = visible.filter(pk=chosen).first() if chosen else None
    return project or visible.first()


def current_project(request) -> dict:
    if not request.user.is_authenticated:
        return {}
    return {
        "current_project": current_project_for(request),
        "switchable_projects": Project.objects.visible_to(request.user),
    }
