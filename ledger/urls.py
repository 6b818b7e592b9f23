from django.urls import path

from ledger.views import home

urlpatterns = [
    path("", home.home, name="home"),
]
