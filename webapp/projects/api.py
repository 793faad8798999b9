"""REST API of projects and their members."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from webapp.api_base import ScopedViewSet, StrictModelSerializer, StrictSerializer
from webapp.projects.models import Membership, Project
from webapp.projects.services import ROLE_NAMES, LastOwner, can_manage_members, create_project, set_member_role


class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ("username", "role", "joined_at")


class ProjectSerializer(StrictModelSerializer):
    memberships = MembershipSerializer(many=True, read_only=True)

    class Meta:
        model = Project
        fields = ("id", "name", "slug", "description", "created_at", "memberships")
        extra_kwargs = {"slug": {"required": False, "help_text": "Short unique name used in URLs and the CLI; "
                                                                 "left out: made from the name."}}

    def create(self, validated_data):
        return create_project(self.context["request"].user, **validated_data)


class AddMemberSerializer(StrictSerializer):
    username = serializers.CharField()
    role = serializers.ChoiceField(choices=Membership.ROLES, default="member",
                                   error_messages={"invalid_choice": f'"{{input}}" is not a role: choose {ROLE_NAMES}'})

    def validate_username(self, value):
        user = get_user_model().objects.filter(username=value).first()
        if user is None:
            raise serializers.ValidationError(f"no user named {value!r}")
        return user


class ProjectViewSet(ScopedViewSet):
    """Projects you are a member of (staff: all). Creating one makes you its owner."""

    queryset = Project.objects.prefetch_related("memberships__user")
    serializer_class = ProjectSerializer

    @extend_schema(request=AddMemberSerializer, responses=ProjectSerializer)
    @action(detail=True, methods=["post"], serializer_class=AddMemberSerializer)
    def members(self, request, pk=None):
        """Add a member, or change a member's role (owners and staff only); answers the project."""
        project = self.get_object()
        if not can_manage_members(project, request.user):
            raise PermissionDenied("only the project's owners can add members")
        serializer = AddMemberSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            set_member_role(project, serializer.validated_data["username"], serializer.validated_data["role"])
        except LastOwner as refused:
            raise serializers.ValidationError({"role": [str(refused)]}) from None
        project = self.get_object()  # again: the memberships prefetched with it are those before the change
        return Response(ProjectSerializer(project, context=self.get_serializer_context()).data,
                        status=status.HTTP_200_OK)
