"""The landing page: a person's own memories, or support's search and queues."""

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers

from ledger import access
from ledger.models import Subject
from ledger.views.http import SignedInRequest
from ledger.views.search import staff_home


@login_required
def home(request: SignedInRequest) -> HttpResponse:
    if access.may_use_support_tools(request.user):
        return staff_home(request)
    query = request.GET.get("q", "").strip()
    visible = Subject.objects.visible_to(request.user)
    if not query:
        # Most people own exactly one subject: their own page is the dashboard.
        only = list(visible.values_list("ref", flat=True)[:2])
        if len(only) == 1:
            return HttpResponseRedirect(reverse("subject", args=[only[0]]))
    subjects = visible.with_memory_counts()
    if query:
        subjects = subjects.filter(Q(ref__icontains=query) | Q(display_name__icontains=query))
    template = "ledger/home.html"
    if request.htmx and request.htmx.target == "subject-results":
        template += "#subject-results"
    response = render(request, template, {"subjects": subjects[:200], "query": query})
    # Same URL, two bodies: caches must key on the htmx headers too.
    patch_vary_headers(response, ("HX-Request", "HX-Target"))
    return response
