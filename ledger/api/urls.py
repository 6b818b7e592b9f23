from django.urls import include, path
from rest_framework.routers import SimpleRouter

from ledger.api.memories import MemoryViewSet, SubjectViewSet

router = SimpleRouter(trailing_slash=False)
router.register("memories", MemoryViewSet, basename="memory")
router.register("subjects", SubjectViewSet, basename="subject")

urlpatterns = [
    path("", include(router.urls)),
]
