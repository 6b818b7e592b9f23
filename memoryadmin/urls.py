from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.templatetags.static import static
from django.urls import include, path
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico whatever a page links (the API docs, a JSON response):
    send them to the icon rather than a 404. Not permanent: the static URL may change."""
    return HttpResponseRedirect(static("ledger/favicon.svg"))


# Under /api/ every answer is JSON, errors included; the pages keep Django's HTML ones.
handler400 = "ledger.api.errors.bad_request"
handler404 = "ledger.api.errors.not_found"
handler500 = "ledger.api.errors.server_error"

urlpatterns = [
    # The Django admin's own form checks the old password outside the sign-in limits.
    path(
        "admin/password_change/",
        RedirectView.as_view(pattern_name="password_change"),
        name="admin-password-change",
    ),
    path("admin/", admin.site.urls),
    path("api/v1/", include("ledger.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path(
        "api/docs/",
        # Swagger UI sets inline styles on its widgets; scripts stay same-origin only.
        csp_override(settings.SECURE_CSP | {"style-src": [CSP.SELF, CSP.UNSAFE_INLINE]})(
            SpectacularSwaggerSplitView.as_view(url_name="schema")
        ),
        name="api-docs",
    ),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Staff sign-in through the company's identity provider (a 404 unless configured).
    path("accounts/oidc/", include("ledger.oidc")),
    path(
        "accounts/password/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path(
        "accounts/set-password/done/",
        auth_views.PasswordResetCompleteView.as_view(title="Password set"),
        name="password_reset_complete",
    ),
    path("favicon.ico", favicon, name="favicon"),
    # The dashboard, and the sign-in pages memoryadmin changes (password change and set).
    path("", include("ledger.urls")),
]
